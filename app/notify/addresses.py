"""E-mail addresses as people type them: checked once, one clear message per bad one."""

from __future__ import annotations

import re
from collections.abc import Iterable
from email.utils import parseaddr

# What a mail server accepts in practice; deliberately not the whole of RFC 5322.
_ADDRESS = re.compile(
    r"^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?$"
)


class AddressError(ValueError):
    """A recipient list is unusable; the text says which entry and why."""


def check_addresses(values: Iterable[str], *, where: str = "to") -> list[str]:
    """The addresses, stripped; raises :class:`AddressError` naming the first bad one."""
    out: list[str] = []
    for i, raw in enumerate(values):
        value = str(raw).strip()
        if any(c in value for c in "\r\n\0"):
            raise AddressError(f"{where}[{i}]: line breaks are not allowed in an address")
        name, addr = parseaddr(value)
        if not addr or not _ADDRESS.match(addr) or len(addr) > 254:
            raise AddressError(f"{where}[{i}]: {value!r} is not an e-mail address")
        out.append(value if name else addr)
    if not out:
        raise AddressError(f"{where}: at least one recipient is needed")
    if len(out) > 100:
        raise AddressError(f"{where}: at most 100 recipients")
    return out
