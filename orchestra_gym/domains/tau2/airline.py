"""The tau2 ``airline`` domain: data model and the 14 agent tools, reimplemented from tau2-bench v0.2.0.

Database tables: ``flights`` (flight_number -> Flight{flight_number, origin, destination,
scheduled_departure_time_est, scheduled_arrival_time_est, dates: {YYYY-MM-DD -> status record}}),
``users`` (user_id -> User{user_id, name, address, email, dob, payment_methods: {id ->
credit_card | gift_card | certificate}, saved_passengers, membership, reservations}) and
``reservations`` (reservation_id -> Reservation{..., flights, passengers, payment_history,
created_at, total_baggages, nonfree_baggages, insurance, status (None or "cancelled")}).
A flight date's record depends on its status: ``available`` (available_seats, prices per cabin),
``landed``, ``flying``, ``on time``, ``delayed`` (departure / arrival times) or ``cancelled``.

Behaviour matched to tau2-bench v0.2.0 (checked against ``tau2_reference/airline``), including
its quirks (each marked ``QUIRK`` below):

1. QUIRK fixed ids and clock: new reservations are ``HATHAT``, ``HATHAU``, ``HATHAV`` (then "Too
   many reservations"), certificates ``certificate_3221322`` .. ``_3221324`` (then "Too many
   certificates"), ``created_at`` is always ``2024-05-15T15:00:00``.
2. QUIRK ``cancel_reservation`` checks nothing: it appends the negation of every payment (again on
   a second cancel, refunds of refunds included) and never releases seats.
3. QUIRK no route checks: neither booking nor a flight update compares the flights with
   ``origin`` / ``destination``; ``update_reservation_flights`` never touches seat counts.
4. QUIRK ``update_reservation_flights`` keeps a segment's stored price only when flight, date and
   cabin are unchanged; a negative difference "paid" with a gift card increases its balance.
5. QUIRK ``update_reservation_baggages`` charges 50 per added non-free bag only; fewer or negative
   bags are stored without refund, float counts stay floats.
6. QUIRK ``search_onestop_flight`` looks for the second leg of an overnight (``+1``) first leg on
   ``2024-05-<day + 1>`` (no zero padding) and compares ``leave_after`` as a string.
7. QUIRK arguments are not validated against the schema; only the models tau2 builds
   (``FlightInfo``, ``Passenger``, ``Payment``, ``Reservation``, ``Certificate``) validate, with
   pydantic's coercions and messages (see `orchestra_gym.domains.tau2.toolkit.validate_model`).
"""

from __future__ import annotations

from typing import Any

from orchestra_gym.domains.tau2.db import ANY, FLOAT, copy_json, dict_of, list_of, model, union
from orchestra_gym.domains.tau2.schemas import AIRLINE_TOOLS
from orchestra_gym.domains.tau2.toolkit import (
    Field, ModelValidationError, Tau2Toolkit, calculate_expression, tool, validate_model,
)

__all__ = ["AirlineTools", "AIRLINE_TABLES", "AIRPORTS"]

_PASSENGER = model(("first_name", ANY), ("last_name", ANY), ("dob", ANY))

#: tau2 airline data model: field order, defaults and float fields of each table's records.
AIRLINE_TABLES = {
    "flights": model(
        ("flight_number", ANY), ("origin", ANY), ("destination", ANY),
        ("scheduled_departure_time_est", ANY), ("scheduled_arrival_time_est", ANY), ("dates", ANY),
    ),
    "users": model(
        ("user_id", ANY), ("name", model(("first_name", ANY), ("last_name", ANY))),
        ("address", model(("address1", ANY), ("address2", ANY), ("city", ANY), ("country", ANY), ("state", ANY),
                          ("zip", ANY))),
        ("email", ANY), ("dob", ANY),
        ("payment_methods", dict_of(union(
            "source",
            credit_card=model(("source", ANY), ("id", ANY), ("brand", ANY), ("last_four", ANY)),
            gift_card=model(("source", ANY), ("id", ANY), ("amount", FLOAT)),
            certificate=model(("source", ANY), ("id", ANY), ("amount", FLOAT)),
        ))),
        ("saved_passengers", list_of(_PASSENGER)), ("membership", ANY), ("reservations", list_of(ANY)),
    ),
    "reservations": model(
        ("reservation_id", ANY), ("user_id", ANY), ("origin", ANY), ("destination", ANY), ("flight_type", ANY),
        ("cabin", ANY),
        ("flights", list_of(model(("flight_number", ANY), ("origin", ANY), ("destination", ANY), ("date", ANY),
                                  ("price", ANY)))),
        ("passengers", list_of(_PASSENGER)),
        ("payment_history", list_of(model(("payment_id", ANY), ("amount", ANY)))),
        ("created_at", ANY), ("total_baggages", ANY), ("nonfree_baggages", ANY), ("insurance", ANY),
        ("status", ANY, None),
    ),
}

#: ``list_all_airports``' fixed answer (tau2 v0.2.0 hard-codes these 20 airports, in this order).
AIRPORTS = (
    ("SFO", "San Francisco"), ("JFK", "New York"), ("LAX", "Los Angeles"), ("ORD", "Chicago"), ("DFW", "Dallas"),
    ("DEN", "Denver"), ("SEA", "Seattle"), ("ATL", "Atlanta"), ("MIA", "Miami"), ("BOS", "Boston"),
    ("PHX", "Phoenix"), ("IAH", "Houston"), ("LAS", "Las Vegas"), ("MCO", "Orlando"), ("EWR", "Newark"),
    ("CLT", "Charlotte"), ("MSP", "Minneapolis"), ("DTW", "Detroit"), ("PHL", "Philadelphia"), ("LGA", "LaGuardia"),
)

_CABINS = ("business", "economy", "basic_economy")
_FLIGHT_INFO = (Field("flight_number", "str"), Field("date", "str"))
_PASSENGER_FIELDS = (Field("first_name", "str"), Field("last_name", "str"), Field("dob", "str"))
_PAYMENT = (Field("payment_id", "str"), Field("amount", "int"))
_RESERVATION = (
    Field("reservation_id", "str"), Field("user_id", "str"), Field("origin", "str"), Field("destination", "str"),
    Field("flight_type", "literal", ("round_trip", "one_way")), Field("cabin", "literal", _CABINS),
    Field("created_at", "str"), Field("total_baggages", "int"), Field("nonfree_baggages", "int"),
    Field("insurance", "literal", ("yes", "no")),
)
_NEW_RESERVATION_IDS = ("HATHAT", "HATHAU", "HATHAV")
_NEW_CERTIFICATE_NUMBERS = (3221322, 3221323, 3221324)
_NOW = "2024-05-15T15:00:00"


class _Record:
    """A validated model instance (FlightInfo, Passenger, Payment): attribute access over its fields."""

    __slots__ = ("data",)

    def __init__(self, data: dict[str, Any]):
        self.data = data

    def __getattr__(self, name: str) -> Any:
        try:
            return self.data[name]
        except KeyError:
            raise AttributeError(name) from None


def _as_models(items: Any, model_name: str, fields: tuple[Field, ...]) -> Any:
    """tau2's ``if all(isinstance(x, dict) ...): [Model(**x) ...]``: otherwise the input is kept as is."""
    if all(isinstance(x, dict) for x in items):
        return [_Record(validate_model(model_name, x, fields)) for x in items]
    return items


def _attr(obj: Any, name: str) -> Any:
    """``obj.<name>`` with Python's AttributeError text for an unconverted argument (``'str' object ...``)."""
    if isinstance(obj, _Record) and name in obj.data:
        return obj.data[name]
    raise AttributeError(f"'{type(obj).__name__}' object has no attribute '{name}'")


def _dump(items: Any, field: str, model_name: str) -> list[Any]:
    """What tau2's ``Reservation(<field>=items)`` stores: the records' dumps.

    Raises:
        ModelValidationError: an item that is not a validated record, with pydantic's text.
    """
    for i, x in enumerate(items):
        if not isinstance(x, _Record):
            raise ModelValidationError(
                f"1 validation error for Reservation\n{field}.{i}\n  Input should be a valid dictionary or instance of "
                f"{model_name} [type=model_type, input_value={x!r}, input_type={type(x).__name__}]\n"
                f"    For further information visit https://errors.pydantic.dev/2.14/v/model_type")
    return [copy_json(x.data) for x in items]


class AirlineTools(Tau2Toolkit):
    """Tools of the tau2 ``airline`` domain (class name as in tau2, used in argument-error texts)."""

    SCHEMAS = AIRLINE_TOOLS

    # -- look-ups (raise ValueError with tau2's texts) ---------------------------------------
    def _get_user(self, user_id: Any) -> dict[str, Any]:
        if not self.db.contains("users", user_id):
            raise ValueError(f"User {user_id} not found")
        return self.db.get("users", user_id)

    def _get_reservation(self, reservation_id: Any) -> dict[str, Any]:
        if not self.db.contains("reservations", reservation_id):
            raise ValueError(f"Reservation {reservation_id} not found")
        return self.db.get("reservations", reservation_id)

    def _get_flight(self, flight_number: Any) -> dict[str, Any]:
        if not self.db.contains("flights", flight_number):
            raise ValueError(f"Flight {flight_number} not found")
        return self.db.get("flights", flight_number)

    def _get_flight_date(self, flight_number: Any, date: Any) -> dict[str, Any]:
        flight = self._get_flight(flight_number)
        if date not in flight["dates"]:
            raise ValueError(f"Flight {flight_number} not found on date {date}")
        return flight["dates"][date]

    def _bookable(self, flight_number: Any, date: Any, cabin: Any, passengers: int) -> tuple[dict, dict]:
        """(flight, its date record) for a flight that is ``available`` with enough seats in ``cabin``."""
        flight = self._get_flight(flight_number)
        day = self._get_flight_date(flight_number, date)
        if day["status"] != "available":
            raise ValueError(f"Flight {flight_number} not available on date {date}")
        # QUIRK (unknown cabin): a cabin without seats fails as a KeyError, "Error: 'first'".
        if day["available_seats"][cabin] < passengers:
            raise ValueError(f"Not enough seats on flight {flight_number}")
        return flight, day

    def _search_direct(self, date: Any, origin: Any = None, destination: Any = None,
                       leave_after: Any = None) -> list[dict[str, Any]]:
        """DirectFlight records (``date`` None) of every flight with status ``available`` on ``date``."""
        found = []
        for flight in self.db.values("flights"):
            if origin is not None and flight["origin"] != origin:
                continue
            if destination is not None and flight["destination"] != destination:
                continue
            day = flight["dates"].get(date)
            if day is None or day["status"] != "available":
                continue
            if leave_after is not None and flight["scheduled_departure_time_est"] < leave_after:
                continue
            found.append({
                "flight_number": flight["flight_number"], "origin": flight["origin"],
                "destination": flight["destination"], "status": "available",
                "scheduled_departure_time_est": flight["scheduled_departure_time_est"],
                "scheduled_arrival_time_est": flight["scheduled_arrival_time_est"], "date": None,
                "available_seats": day["available_seats"], "prices": day["prices"],
            })
        return found

    def _payment_for_update(self, user_id: str, payment_id: Any, total_price: Any) -> dict[str, Any] | None:
        """Check the payment method of a reservation update, charge a gift card; the Payment or None."""
        user = self.db.get("users", user_id)
        if payment_id not in user["payment_methods"]:
            raise ValueError("Payment method not found")
        method = user["payment_methods"][payment_id]
        if method["source"] == "certificate":
            raise ValueError("Certificate cannot be used to update reservation")
        if method["source"] == "gift_card":
            if method["amount"] < total_price:
                raise ValueError("Gift card balance is not enough")
            # QUIRK (refund to gift card): a negative price raises the balance.
            self.db.edit("users", user_id)["payment_methods"][payment_id]["amount"] -= total_price
        if total_price == 0:
            return None
        return validate_model("Payment", {"payment_id": payment_id, "amount": total_price}, _PAYMENT)

    # -- tools, in tau2's order ---------------------------------------------------------------
    @tool("WRITE")
    def book_reservation(
        self, user_id: str, origin: str, destination: str, flight_type: str, cabin: str, flights: list[Any],
        passengers: list[Any], payment_methods: list[Any], total_baggages: int, nonfree_baggages: int,
        insurance: str,
    ) -> dict[str, Any]:
        """Book a reservation: check flights, seats and payments; charge; take seats; store it."""
        flights = _as_models(flights, "FlightInfo", _FLIGHT_INFO)
        passengers = _as_models(passengers, "Passenger", _PASSENGER_FIELDS)
        payment_methods = _as_models(payment_methods, "Payment", _PAYMENT)
        user = self._get_user(user_id)
        reservation_id = next((r for r in _NEW_RESERVATION_IDS if not self.db.contains("reservations", r)), None)
        if reservation_id is None:
            raise ValueError("Too many reservations")
        head = validate_model("Reservation", {
            "reservation_id": reservation_id, "user_id": user_id, "origin": origin, "destination": destination,
            "flight_type": flight_type, "cabin": cabin, "created_at": _NOW, "total_baggages": total_baggages,
            "nonfree_baggages": nonfree_baggages, "insurance": insurance,
        }, _RESERVATION)
        reservation = {
            "reservation_id": reservation_id, "user_id": head["user_id"], "origin": head["origin"],
            "destination": head["destination"], "flight_type": head["flight_type"], "cabin": head["cabin"],
            "flights": [], "passengers": _dump(passengers, "passengers", "Passenger"),
            "payment_history": _dump(payment_methods, "payment_history", "Payment"),
            "created_at": _NOW, "total_baggages": head["total_baggages"],
            "nonfree_baggages": head["nonfree_baggages"], "insurance": head["insurance"], "status": None,
        }
        total_price = 0
        taken = []
        for info in flights:
            number, date = _attr(info, "flight_number"), _attr(info, "date")
            flight, day = self._bookable(number, date, cabin, len(passengers))
            price = day["prices"][cabin]
            reservation["flights"].append({"flight_number": number, "origin": flight["origin"],
                                           "destination": flight["destination"], "date": date, "price": price})
            taken.append((number, date))
            total_price += price * len(passengers)
        if insurance == "yes":
            total_price += 30 * len(passengers)
        # QUIRK (no validation): nonfree_baggages "1" makes 50 * "1" a str, so += raises TypeError.
        total_price += 50 * nonfree_baggages
        for payment in payment_methods:
            payment_id, amount = _attr(payment, "payment_id"), _attr(payment, "amount")
            if payment_id not in user["payment_methods"]:
                raise ValueError(f"Payment method {payment_id} not found")
            method = user["payment_methods"][payment_id]
            if method["source"] in ("gift_card", "certificate") and method["amount"] < amount:
                raise ValueError(f"Not enough balance in payment method {payment_id}")
        total_payment = sum(_attr(p, "amount") for p in payment_methods)
        if total_payment != total_price:
            raise ValueError(f"Payment amount does not add up, total price is {total_price}, but paid {total_payment}")
        user = self.db.edit("users", user_id)
        for payment in payment_methods:
            payment_id = _attr(payment, "payment_id")
            method = user["payment_methods"].get(payment_id)
            if method is None:  # a certificate listed twice was already removed (tau2: KeyError)
                raise KeyError(payment_id)
            if method["source"] == "gift_card":
                method["amount"] -= _attr(payment, "amount")
            elif method["source"] == "certificate":
                # QUIRK (certificate): removed even when only part of it is used.
                del user["payment_methods"][payment_id]
        for number, date in taken:
            self.db.edit("flights", number)["dates"][date]["available_seats"][cabin] -= len(passengers)
        self.db.put("reservations", reservation_id, reservation)
        user["reservations"].append(reservation_id)
        return reservation

    @tool("GENERIC")
    def calculate(self, expression: str) -> str:
        """Evaluate ``+ - * / ( ) .`` arithmetic; returns ``str(round(float(value), 2))`` (see `calculate_expression`)."""
        return calculate_expression(expression)

    @tool("WRITE")
    def cancel_reservation(self, reservation_id: str) -> dict[str, Any]:
        """Cancel: append the negation of every payment and set status ``cancelled``."""
        self._get_reservation(reservation_id)
        reservation = self.db.edit("reservations", reservation_id)
        # QUIRK (no checks): no status check, seats not released, refunds of refunds on a second cancel.
        refunds = [{"payment_id": p["payment_id"], "amount": -p["amount"]} for p in reservation["payment_history"]]
        reservation["payment_history"].extend(refunds)
        reservation["status"] = "cancelled"
        return reservation

    @tool("READ")
    def get_reservation_details(self, reservation_id: str) -> dict[str, Any]:
        """The reservation record."""
        return self._get_reservation(reservation_id)

    @tool("READ")
    def get_user_details(self, user_id: str) -> dict[str, Any]:
        """The user record."""
        return self._get_user(user_id)

    @tool("READ")
    def list_all_airports(self) -> list[dict[str, str]]:
        """The 20 airports as ``{"iata", "city"}`` records."""
        return [{"iata": code, "city": city} for code, city in AIRPORTS]

    @tool("READ")
    def search_direct_flight(self, origin: str, destination: str, date: str) -> list[dict[str, Any]]:
        """Direct flights with status ``available`` on ``date`` (their ``date`` field is null, as in tau2)."""
        return self._search_direct(date, origin, destination)

    @tool("READ")
    def search_onestop_flight(self, origin: str, destination: str, date: str) -> list[list[dict[str, Any]]]:
        """Pairs of available flights origin -> X -> destination, the second leaving after the first arrives."""
        pairs = []
        for first in self._search_direct(date, origin, None):
            first["date"] = date
            arrival = first["scheduled_arrival_time_est"]
            # QUIRK (overnight leg): next day as "2024-05-<day+1>", unpadded; leave_after compared as a string.
            date2 = f"2024-05-{int(date[-2:]) + 1}" if "+1" in arrival else date
            for second in self._search_direct(date2, first["destination"], destination, leave_after=arrival):
                second["date"] = date2
                pairs.append([first, second])
        return pairs

    @tool("WRITE")
    def send_certificate(self, user_id: str, amount: float) -> str:
        """Add a certificate of ``amount`` to a user (first free id of three fixed ones)."""
        user = self._get_user(user_id)
        for number in _NEW_CERTIFICATE_NUMBERS:
            payment_id = f"certificate_{number}"
            if payment_id not in user["payment_methods"]:
                record = validate_model("Certificate", {"source": "certificate", "id": payment_id, "amount": amount},
                                        (Field("source", "str"), Field("id", "str"), Field("amount", "float")))
                self.db.edit("users", user_id)["payment_methods"][payment_id] = record
                return f"Certificate {payment_id} added to user {user_id} with amount {amount}."
        raise ValueError("Too many certificates")

    @tool("GENERIC")
    def transfer_to_human_agents(self, summary: str) -> str:
        """Hand the conversation to a human; the summary is not checked."""
        return "Transfer successful"

    @tool("WRITE")
    def update_reservation_baggages(
        self, reservation_id: str, total_baggages: int, nonfree_baggages: int, payment_id: str
    ) -> dict[str, Any]:
        """Set the bag counts; 50 per added non-free bag is charged to ``payment_id``."""
        reservation = self._get_reservation(reservation_id)
        user_id = reservation["user_id"]
        self._get_user(user_id)
        # QUIRK (bags): no refund for fewer bags; counts stored unvalidated ("1" fails on the subtraction).
        total_price = 50 * max(0, nonfree_baggages - reservation["nonfree_baggages"])
        payment = self._payment_for_update(user_id, payment_id, total_price)
        reservation = self.db.edit("reservations", reservation_id)
        if payment is not None:
            reservation["payment_history"].append(payment)
        reservation["total_baggages"] = total_baggages
        reservation["nonfree_baggages"] = nonfree_baggages
        return reservation

    @tool("WRITE")
    def update_reservation_flights(
        self, reservation_id: str, cabin: str, flights: list[Any], payment_id: str
    ) -> dict[str, Any]:
        """Replace the flights (and cabin); charge or refund the difference to the stored prices."""
        flights = _as_models(flights, "FlightInfo", _FLIGHT_INFO)
        reservation = self._get_reservation(reservation_id)
        user_id = reservation["user_id"]
        self._get_user(user_id)
        n_passengers = len(reservation["passengers"])
        total_price = 0
        new_flights = []
        for info in flights:
            number, date = _attr(info, "flight_number"), _attr(info, "date")
            # QUIRK (repricing): a segment keeps its stored price only if flight, date and cabin are unchanged.
            kept = next((f for f in reservation["flights"] if f["flight_number"] == number and f["date"] == date
                         and cabin == reservation["cabin"]), None)
            if kept is not None:
                total_price += kept["price"] * n_passengers
                new_flights.append(kept)
                continue
            flight, day = self._bookable(number, date, cabin, n_passengers)
            price = day["prices"][cabin]
            new_flights.append({"flight_number": number, "origin": flight["origin"],
                                "destination": flight["destination"], "date": date, "price": price})
            total_price += price * n_passengers
        total_price -= sum(f["price"] for f in reservation["flights"]) * n_passengers
        payment = self._payment_for_update(user_id, payment_id, total_price)
        new_flights = copy_json(new_flights)
        reservation = self.db.edit("reservations", reservation_id)
        if payment is not None:
            reservation["payment_history"].append(payment)
        reservation["flights"] = new_flights
        reservation["cabin"] = cabin
        return reservation

    @tool("WRITE")
    def update_reservation_passengers(self, reservation_id: str, passengers: list[Any]) -> dict[str, Any]:
        """Replace the passengers (same number as before)."""
        passengers = _as_models(passengers, "Passenger", _PASSENGER_FIELDS)
        reservation = self._get_reservation(reservation_id)
        if len(passengers) != len(reservation["passengers"]):
            raise ValueError("Number of passengers does not match")
        # an unconverted list is assigned as is (tau2 does not validate assignments)
        new = [copy_json(x.data) if isinstance(x, _Record) else copy_json(x) for x in passengers]
        reservation = self.db.edit("reservations", reservation_id)
        reservation["passengers"] = new
        return reservation

    @tool("READ")
    def get_flight_status(self, flight_number: str, date: str) -> str:
        """The bare status string of a flight on a date (``available``, ``landed``, ...)."""
        return self._get_flight_date(flight_number, date)["status"]
