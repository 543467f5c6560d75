"""Weather domain: users subscribe to forecast plans by the month (ToolScale domain 'weather', Sec. 3.3)."""

from orchestra_gym.domains.synthetic.booking import BookingConfig, Field, build_domain, choice

CONFIG = BookingConfig(
    name="weather",
    title="weather forecast service",
    customer="user",
    item="forecast_plan",
    booking="subscription",
    unit="months",
    item_fields=(
        Field("region", "string", choice("Alps", "North Sea coast", "Great Plains"), "Region covered."),
        Field("plan_type", "string", choice("hourly", "marine"), "Kind of forecast."),
        Field("resolution", "string", choice("1 km", "3 km", "10 km"), "Spatial resolution of the forecast."),
        Field("provider", "string", choice("AeroCast", "SkyLab", "Nimbus Data"), "Forecast provider."),
    ),
    search_fields=("region", "plan_type"),
    item_name=lambda rng, i: f"{choice('Basic', 'Plus', 'Pro')(rng)} forecast {i + 1}",
    profile=Field("home_region", "string", choice("Alps", "North Sea coast", "Great Plains", "Pacific Northwest"),
                  "The region the user lives in."),
    done_status="expired",
    price_range=(5.0, 60.0),
    max_quantity=12,
    cancel_fee=0.3,
    payment_kinds=("credit_card", "paypal", "gift_card"),
)
SPEC = build_domain(CONFIG)
