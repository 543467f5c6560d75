"""Restaurant domain: guests book tables, paying a deposit per guest (ToolScale domain 'restaurant', Sec. 3.3)."""

from orchestra_gym.domains.synthetic.booking import BookingConfig, Field, build_domain, choice

CONFIG = BookingConfig(
    name="restaurant",
    title="restaurant reservations",
    customer="guest",
    item="restaurant",
    booking="table_booking",
    unit="guests",
    item_fields=(
        Field("cuisine", "string", choice("italian", "japanese", "lebanese"), "Cuisine."),
        Field("area", "string", choice("old town", "harbour"), "Neighbourhood."),
        Field("seating_time", "string", choice("18:30", "19:00", "20:15", "21:00"), "Seating time (HH:MM)."),
        Field("dress_code", "string", choice("casual", "smart casual", "formal"), "Dress code."),
    ),
    search_fields=("cuisine", "area"),
    item_name=lambda rng, i: f"{choice('Casa', 'Chez', 'Villa', 'Taverna')(rng)} "
    f"{choice('Luna', 'Sol', 'Mare', 'Verde', 'Rosa')(rng)}",
    profile=Field("phone", "string", lambda rng: f"+39-347-{int(rng.integers(100000, 999999))}", "Phone number."),
    done_status="seated",
    price_range=(10.0, 60.0),
    max_quantity=8,
    cancel_fee=0.5,
    payment_kinds=("credit_card", "gift_card", "debit_card"),
)
SPEC = build_domain(CONFIG)
