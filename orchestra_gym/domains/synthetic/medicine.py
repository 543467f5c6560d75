"""Medicine domain: patients book clinic sessions (ToolScale domain 'medicine', paper Sec. 3.3)."""

from orchestra_gym.domains.synthetic.booking import BookingConfig, Field, build_domain, choice

CONFIG = BookingConfig(
    name="medicine",
    title="clinic appointment desk",
    customer="patient",
    item="clinic_session",
    booking="appointment",
    unit="sessions",
    item_fields=(
        Field("specialty", "string", choice("physiotherapy", "dermatology", "dentistry"), "Medical specialty."),
        Field("clinic", "string", choice("Central Clinic", "Harbor Clinic"), "Clinic location."),
        Field("doctor", "string", choice("Dr. Alvarez", "Dr. Brandt", "Dr. Chowdhury", "Dr. Dubois"), "Doctor."),
        Field("weekday", "string", choice("Tuesday", "Thursday", "Friday"), "Day of the session."),
    ),
    search_fields=("specialty", "clinic"),
    item_name=lambda rng, i: f"{choice('Consultation', 'Treatment', 'Check-up')(rng)} block {i + 1}",
    profile=Field("insurance_number", "string", lambda rng: f"INS{int(rng.integers(100000, 999999))}",
                  "Health insurance number."),
    done_status="completed",
    price_range=(40.0, 220.0),
    max_quantity=5,
    cancel_fee=0.25,
    payment_kinds=("credit_card", "health_savings_account", "debit_card"),
)
SPEC = build_domain(CONFIG)
