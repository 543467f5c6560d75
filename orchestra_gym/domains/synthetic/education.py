"""Education domain: students enrol in tutoring sessions of courses (ToolScale domain 'education', Sec. 3.3)."""

from orchestra_gym.domains.synthetic.booking import BookingConfig, Field, build_domain, choice

CONFIG = BookingConfig(
    name="education",
    title="course enrollment office",
    customer="student",
    item="course",
    booking="enrollment",
    unit="sessions",
    item_fields=(
        Field("subject", "string", choice("mathematics", "chemistry", "history"), "Subject."),
        Field("level", "string", choice("beginner", "advanced"), "Level."),
        Field("instructor", "string", choice("Prof. Ito", "Prof. Kaur", "Prof. Lenz", "Prof. Mba"), "Instructor."),
        Field("format", "string", choice("online", "in person"), "How sessions are held."),
    ),
    search_fields=("subject", "level"),
    item_name=lambda rng, i: f"{choice('Foundations', 'Topics', 'Workshop', 'Seminar')(rng)} {100 + 10 * i}",
    profile=Field("major", "string", choice("biology", "economics", "physics", "linguistics", "law"), "Major."),
    done_status="completed",
    price_range=(30.0, 150.0),
    max_quantity=6,
    cancel_fee=0.1,
    payment_kinds=("credit_card", "scholarship_fund", "bank_transfer"),
)
SPEC = build_domain(CONFIG)
