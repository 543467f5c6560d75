"""Finance domain: clients place orders for fund units (ToolScale domain 'finance', paper Sec. 3.3)."""

from orchestra_gym.domains.synthetic.booking import BookingConfig, Field, build_domain, choice

CONFIG = BookingConfig(
    name="finance",
    title="investment brokerage",
    customer="client",
    item="fund",
    booking="order",
    unit="units",
    item_fields=(
        Field("asset_class", "string", choice("equity", "bond"), "Asset class of the fund."),
        Field("risk_level", "string", choice("low", "high"), "Risk level of the fund."),
        Field("currency", "string", choice("USD", "EUR", "GBP"), "Currency the fund is priced in."),
        Field("manager", "string", choice("Harbor Capital", "Pinecrest", "Meridian", "Atlas"), "Fund manager."),
    ),
    search_fields=("asset_class", "risk_level"),
    item_name=lambda rng, i: f"{choice('Global', 'Emerging', 'Core', 'Dividend')(rng)} Fund {i + 1}",
    profile=Field("phone", "string", lambda rng: f"+1-555-{int(rng.integers(1000, 9999))}", "Phone number."),
    done_status="settled",
    price_range=(10.0, 250.0),
    max_quantity=8,
    cancel_fee=0.02,
    payment_kinds=("brokerage_account", "bank_transfer", "credit_card"),
)
SPEC = build_domain(CONFIG)
