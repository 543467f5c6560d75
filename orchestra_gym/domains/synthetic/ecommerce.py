"""E-commerce domain: customers order products (ToolScale domain 'e-commerce', paper Sec. 3.3)."""

from orchestra_gym.domains.synthetic.booking import BookingConfig, Field, build_domain, choice

CONFIG = BookingConfig(
    name="e-commerce",
    title="online shop customer service",
    customer="customer",
    item="product",
    booking="order",
    unit="units",
    item_fields=(
        Field("category", "string", choice("headphones", "backpack", "desk lamp"), "Product category."),
        Field("color", "string", choice("black", "white"), "Product colour."),
        Field("brand", "string", choice("Norvik", "Altera", "Lumo", "Kestrel"), "Brand name."),
        Field("warranty_months", "integer", choice(6, 12, 24), "Warranty length in months."),
    ),
    search_fields=("category", "color"),
    item_name=lambda rng, i: f"{choice('Pro', 'Lite', 'Max', 'Air')(rng)} {int(rng.integers(10, 99))}",
    profile=Field("shipping_address", "string",
                  lambda rng: f"{int(rng.integers(1, 200))} {choice('Oak', 'Elm', 'Main', 'Lake')(rng)} Street",
                  "The customer's shipping address."),
    done_status="delivered",
    price_range=(15.0, 320.0),
    max_quantity=5,
    cancel_fee=0.05,
    payment_kinds=("credit_card", "gift_card", "paypal"),
)
SPEC = build_domain(CONFIG)
