"""The bonus file: CSV with the columns ``participant_id,amount`` and an optional ``reason``.

Amounts are in the study's currency with at most two decimals (``1.50``), as Prolific's
``csv_bonuses`` takes them. Nothing is written here; every problem is reported by row.
"""

from __future__ import annotations

import csv
import io
import re
from decimal import Decimal, InvalidOperation

COLUMNS = ("participant_id", "amount")
MAX_BYTES = 2 * 1024 * 1024
MAX_ROWS = 10000
MAX_AMOUNT = Decimal("100.00")  # one bonus; a larger figure is almost surely pence typed as pounds
REASON = re.compile(r"^[A-Za-z0-9 _.:-]{1,80}$")
DEFAULT_REASON = "csv"
PARTICIPANT = re.compile(r"^[A-Za-z0-9]{1,64}$")


class BonusFileError(ValueError):
    def __init__(self, errors: list[str]):
        super().__init__("; ".join(errors))
        self.errors = errors


def parse_amount(text: str, what: str = "amount") -> Decimal:
    """A positive amount with at most two decimals, up to :data:`MAX_AMOUNT`."""
    try:
        value = Decimal(text.strip())
    except (InvalidOperation, AttributeError):
        raise ValueError(f"{what} {text!r} is not a number like 0.50") from None
    if not value.is_finite() or value <= 0:
        raise ValueError(f"{what} {text!r} must be more than 0")
    if value != value.quantize(Decimal("0.01")):
        raise ValueError(f"{what} {text!r} has more than two decimals")
    if value > MAX_AMOUNT:
        raise ValueError(
            f"{what} {text!r} is more than {MAX_AMOUNT}; amounts are in pounds or dollars, not pence"
        )
    return value.quantize(Decimal("0.01"))


def parse_bonus_csv(data: bytes) -> list[tuple[str, Decimal, str]]:
    """(participant_id, amount, reason) rows; raises BonusFileError with every problem (header = row 1)."""
    if len(data) > MAX_BYTES:
        raise BonusFileError([f"the file is larger than {MAX_BYTES // 1024 // 1024} MB"])
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise BonusFileError(["the file is not UTF-8 text"]) from None
    if "\x00" in text:
        raise BonusFileError(["the file contains NUL characters; is it a spreadsheet saved as CSV?"])
    reader = csv.DictReader(io.StringIO(text))
    header = [(h or "").strip().lower() for h in (reader.fieldnames or [])]
    missing = [c for c in COLUMNS if c not in header]
    if missing:
        raise BonusFileError(
            [
                f"row 1: missing column(s) {', '.join(missing)}; the header must be "
                "`participant_id,amount` (and optionally `reason`)"
            ]
        )
    reader.fieldnames = header
    rows, errors, seen = [], [], {}
    for number, row in enumerate(reader, start=2):
        if number - 1 > MAX_ROWS:
            errors.append(f"more than {MAX_ROWS} rows")
            break
        pid = (row.get("participant_id") or "").strip()
        reason = (row.get("reason") or "").strip() or DEFAULT_REASON
        if not PARTICIPANT.match(pid):
            errors.append(
                f"row {number}, column `participant_id`: {pid[:40]!r} is not a Prolific participant id"
            )
            continue
        if not REASON.match(reason):
            errors.append(f"row {number}, column `reason`: use up to 80 letters, digits, spaces and _ . : -")
            continue
        try:
            amount = parse_amount(row.get("amount") or "")
        except ValueError as exc:
            errors.append(f"row {number}, column `amount`: {exc}")
            continue
        if (pid, reason) in seen:
            errors.append(f"row {number}: {pid} already has a `{reason}` bonus on row {seen[pid, reason]}")
            continue
        seen[pid, reason] = number
        rows.append((pid, amount, reason))
    if errors:
        raise BonusFileError(errors)
    if not rows:
        raise BonusFileError(["the file has no rows under its header"])
    return rows
