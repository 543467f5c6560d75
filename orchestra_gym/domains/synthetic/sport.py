"""Sport domain: gym members book spots in fitness classes (ToolScale domain 'sport', paper Sec. 3.3)."""

from orchestra_gym.domains.synthetic.booking import BookingConfig, Field, build_domain, choice

CONFIG = BookingConfig(
    name="sport",
    title="sports club bookings",
    customer="member",
    item="fitness_class",
    booking="booking",
    unit="spots",
    item_fields=(
        Field("sport", "string", choice("yoga", "spinning", "boxing"), "Kind of class."),
        Field("venue", "string", choice("North Hall", "River Gym"), "Where the class takes place."),
        Field("coach", "string", choice("Coach Ada", "Coach Ben", "Coach Cleo", "Coach Dev"), "Coach."),
        Field("weekday", "string", choice("Monday", "Wednesday", "Friday", "Saturday"), "Day of the class."),
    ),
    search_fields=("sport", "venue"),
    item_name=lambda rng, i: f"{choice('Morning', 'Lunch', 'Evening')(rng)} session {i + 1}",
    profile=Field("phone", "string", lambda rng: f"+44-7700-{int(rng.integers(100000, 999999))}", "Phone number."),
    done_status="attended",
    price_range=(8.0, 45.0),
    max_quantity=4,
    cancel_fee=0.2,
    payment_kinds=("credit_card", "club_credit", "gift_card"),
)
SPEC = build_domain(CONFIG)
