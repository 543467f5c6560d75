"""Entertainment domain: customers reserve tickets for shows (ToolScale domain 'entertainment', Sec. 3.3)."""

from orchestra_gym.domains.synthetic.booking import BookingConfig, Field, build_domain, choice

CONFIG = BookingConfig(
    name="entertainment",
    title="event ticketing",
    customer="customer",
    item="show",
    booking="reservation",
    unit="tickets",
    item_fields=(
        Field("genre", "string", choice("comedy", "concert", "theatre"), "Kind of show."),
        Field("city", "string", choice("Lyon", "Porto"), "City of the show."),
        Field("venue", "string", choice("Grand Hall", "Blue Note", "Open Air Stage", "Studio 5"), "Venue."),
        Field("start_time", "string", choice("18:00", "19:30", "20:00", "21:45"), "Start time (HH:MM, local)."),
    ),
    search_fields=("genre", "city"),
    item_name=lambda rng, i: f"{choice('Midnight', 'Golden', 'Electric', 'Silent')(rng)} "
    f"{choice('Echoes', 'Laughs', 'Nights', 'Dreams')(rng)}",
    profile=Field("phone", "string", lambda rng: f"+33-6-{int(rng.integers(10000000, 99999999))}", "Phone number."),
    done_status="attended",
    price_range=(25.0, 180.0),
    max_quantity=8,
    cancel_fee=0.1,
    payment_kinds=("credit_card", "gift_card", "paypal"),
)
SPEC = build_domain(CONFIG)
