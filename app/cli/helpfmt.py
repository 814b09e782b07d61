"""Help text without a type column for on/off flags.

typer (0.29) prints every option's type in ``--help``, so flags read ``--dry-run <bool>``
and even ``--help <bool>``: as if they took a value. A flag takes none; its type column
is left empty. Help output only: parsing is untouched.
"""

from __future__ import annotations

from typing import Any

import typer.core

_display_type_rich = typer.core.TyperOption.display_type_rich


def _without_flag_type(self: typer.core.TyperOption, ctx: Any) -> str | None:
    if self.is_flag and not self.secondary_opts:
        return None
    return _display_type_rich(self, ctx)


def install() -> None:
    typer.core.TyperOption.display_type_rich = _without_flag_type  # type: ignore[method-assign]
