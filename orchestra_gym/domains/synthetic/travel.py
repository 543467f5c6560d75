"""Travel domain: travellers book hotel nights (ToolScale domain 'travel', paper Sec. 3.3)."""

from orchestra_gym.domains.synthetic.booking import BookingConfig, Field, build_domain, choice

CONFIG = BookingConfig(
    name="travel",
    title="hotel travel agency",
    customer="traveler",
    item="hotel",
    booking="stay",
    unit="nights",
    item_fields=(
        Field("city", "string", choice("Lisbon", "Kyoto", "Oslo"), "City of the hotel."),
        Field("room_type", "string", choice("single", "double"), "Room type."),
        Field("neighborhood", "string", choice("center", "airport", "riverside", "old quarter"), "Neighbourhood."),
        Field("breakfast", "string", choice("included", "not included"), "Whether breakfast is included."),
    ),
    search_fields=("city", "room_type"),
    item_name=lambda rng, i: f"Hotel {choice('Aurora', 'Bellevue', 'Cedar', 'Dune', 'Esplanade')(rng)} {i + 1}",
    profile=Field("passport_number", "string", lambda rng: f"P{int(rng.integers(1000000, 9999999))}",
                  "Passport number."),
    done_status="checked_out",
    price_range=(60.0, 380.0),
    max_quantity=10,
    cancel_fee=0.15,
    payment_kinds=("credit_card", "travel_voucher", "debit_card"),
)
SPEC = build_domain(CONFIG)
