"""Request dependencies shared by pages and the API: the engine, templates, the vault."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

from fastapi import Depends, Request
from fastapi.templating import Jinja2Templates
from sqlalchemy.engine import Connection, Engine

from app.secrets import Vault
from app.web.views.reuse.recent import Reuse

ROOT = Path(__file__).resolve().parents[2]
TEMPLATES_DIR = ROOT / "templates"
STATIC_DIR = ROOT / "static"


async def get_engine(request: Request) -> Engine:
    engine: Engine = request.app.state.engine
    return engine


EngineDep = Annotated[Engine, Depends(get_engine)]


def get_conn(engine: EngineDep) -> Iterator[Connection]:
    """A read connection for the request (rolled back at the end: pages never write)."""
    with engine.connect() as conn:
        yield conn


ConnDep = Annotated[Connection, Depends(get_conn)]


async def get_templates(request: Request) -> Jinja2Templates:
    templates: Jinja2Templates = request.app.state.templates
    return templates


TemplatesDep = Annotated[Jinja2Templates, Depends(get_templates)]


async def get_reuse(request: Request) -> Reuse:
    reuse: Reuse = request.app.state.reuse
    return reuse


ReuseDep = Annotated[Reuse, Depends(get_reuse)]


def get_vault(request: Request) -> Vault:
    """The vault that encrypts passwords typed into the target form (built on first use)."""
    vault: Vault | None = request.app.state.vault
    if vault is None:
        from app.config import get_settings

        vault = Vault.from_settings(get_settings())
        request.app.state.vault = vault
    return vault


VaultDep = Annotated[Vault, Depends(get_vault)]
