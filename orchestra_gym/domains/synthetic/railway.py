"""Railway domain: passengers book seats on trains (ToolScale domain 'railway', paper Sec. 3.3)."""

from orchestra_gym.domains.synthetic.booking import BookingConfig, Field, build_domain, choice

STATIONS = ("Amsterdam", "Berlin", "Cologne", "Dresden", "Erfurt")

CONFIG = BookingConfig(
    name="railway",
    title="railway ticketing",
    customer="passenger",
    item="train",
    booking="ticket",
    unit="seats",
    item_fields=(
        Field("origin", "string", choice(*STATIONS[:3]), "Departure station."),
        Field("destination", "string", choice(*STATIONS[3:]), "Arrival station."),
        Field("departure_time", "string", choice("06:10", "08:45", "11:30", "14:05", "17:50", "21:15"),
              "Departure time (HH:MM, local)."),
        Field("travel_class", "string", choice("first", "second"), "Travel class of the seats."),
    ),
    search_fields=("origin", "destination"),
    item_name=lambda rng, i: f"{choice('ICE', 'IC', 'RE')(rng)} {int(rng.integers(100, 999))}",
    profile=Field("home_station", "string", choice(*STATIONS), "The passenger's home station."),
    done_status="used",
    price_range=(19.0, 189.0),
    max_quantity=6,
    cancel_fee=0.15,
    payment_kinds=("credit_card", "gift_card", "rail_voucher"),
)
SPEC = build_domain(CONFIG)
