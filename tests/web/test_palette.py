"""Mode colours: a TLS mode is not drawn in its tcp twin's colour, no two modes of a target
share one, a mode keeps its colour whatever else the page shows, and the target API, the
target page and the compare page all give a mode the same colour."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine

from app.secrets import Vault
from app.store.write.ingest import write_samples
from app.targets.schema import parse_targets
from app.targets.sync import import_targets
from app.web.palette import (
    INSTANCE_COLORS,
    MODE_STYLES,
    OKABE_ITO,
    SPARE_STYLES,
    TLS_STYLES,
    mode_style,
    target_styles,
)
from app.web.views.lookups import load_targets
from tests.web.data import _ok


@dataclass
class M:
    name: str
    kind: str
    transport: str = "tcp"


def test_tls_modes_have_their_own_colour_and_dash() -> None:
    for kind in ("dedicated", "shared", "pooled"):
        tcp, tls = mode_style(kind), mode_style(kind, "tcps")
        assert tcp == MODE_STYLES[kind]
        assert tls["color"] != tcp["color"] and tls["dash"] != tcp["dash"]
    oracle = [mode_style(k, t) for k in ("dedicated", "shared", "pooled") for t in ("tcp", "tcps")]
    assert len({s["color"] for s in oracle}) == 6
    assert OKABE_ITO["yellow"] not in {s["color"] for s in oracle}  # unreadable on white


def test_instance_lines_are_never_in_a_mode_colour() -> None:
    kinds = {s["color"] for s in (*MODE_STYLES.values(), *TLS_STYLES.values())}
    first_spares = {s["color"] for s in SPARE_STYLES[:4]}
    assert not set(INSTANCE_COLORS) & (kinds | first_spares)
    assert len(set(INSTANCE_COLORS)) == len(INSTANCE_COLORS)


def test_every_mode_of_a_target_gets_a_colour_of_its_own() -> None:
    modes = [
        M("dedicated", "dedicated"),
        M("shared", "shared"),
        M("pooled", "pooled"),
        M("dedicated-tls", "dedicated", "tcps"),
        M("sales1", "dedicated"),  # pinned to one RAC instance each
        M("sales2", "dedicated"),
        M("pooled-tls", "pooled", "tcps"),
    ]
    styles = target_styles(modes)
    assert styles["dedicated"]["color"] == OKABE_ITO["blue"]
    assert styles["dedicated-tls"]["color"] == OKABE_ITO["vermillion"]
    assert styles["pooled-tls"]["color"] == OKABE_ITO["purple"]
    assert len({s["color"] for s in styles.values()}) == len(modes)
    # past the palette, colours repeat with another dash: never the same line twice
    many = target_styles([M(f"d{i}", "dedicated") for i in range(len(SPARE_STYLES) + 3)])
    looks = [(s["color"], s["dash"]) for s in many.values()]
    assert len(set(looks)) == len(looks)


def test_a_mode_keeps_its_colour_whatever_is_added_after_it() -> None:
    first = target_styles([M("dedicated", "dedicated"), M("dedicated-tls", "dedicated", "tcps")])
    more = target_styles(
        [
            M("dedicated", "dedicated"),
            M("dedicated-tls", "dedicated", "tcps"),
            M("other", "dedicated", "tcps"),
        ]
    )
    assert more["dedicated"] == first["dedicated"]
    assert more["dedicated-tls"] == first["dedicated-tls"]
    assert more["other"]["color"] not in {first["dedicated"]["color"], OKABE_ITO["vermillion"]}
    # a second dedicated mode takes a colour no kind prefers: a TLS mode added later keeps its own
    later = target_styles(
        [M("dedicated", "dedicated"), M("pinned", "dedicated"), M("tls", "dedicated", "tcps")]
    )
    assert later["tls"] == mode_style("dedicated", "tcps")


TLS_TARGET = """
targets:
  - name: tlsdb
    kind: oracle
    dsn: 'db:1521/S'
    username: u
    modes:
      - {name: dedicated}
      - {name: dedicated-tls, kind: dedicated, transport: tcps}
      - {name: pinned, kind: dedicated}
"""


def test_api_target_page_and_compare_page_agree(
    client: TestClient, migrated_engine: Engine, vault: Vault
) -> None:
    now = datetime.now(UTC).replace(microsecond=0)
    with migrated_engine.begin() as conn:
        import_targets(conn, parse_targets(TLS_TARGET, "t"), vault)
        ids = [s.id for t in load_targets(conn, "tlsdb") for m in t.modes for s in m.series]
        write_samples(
            conn,
            [_ok(sid, now - timedelta(minutes=i), 5.0, 1.0, i) for sid in ids for i in range(1, 6)],
        )
    api = client.get("/api/v1/targets/tlsdb").json()
    colours = {m["name"]: m["color"] for m in api["modes"]}
    assert colours["dedicated"] != colours["dedicated-tls"] != colours["pinned"]
    assert len(set(colours.values())) == 3
    page = client.get("/target/tlsdb?modes=dedicated-tls").text
    for name, colour in colours.items():  # every mode's swatch, chosen or not
        assert re.search(rf"background: {colour}\"[^>]*></span>{name}<", page), name
    compare = client.get("/api/v1/compare?target=tlsdb&range=1h").json()["modes"]
    daily = client.get("/api/v1/compare/daily?target=tlsdb&range=1h").json()["modes"]
    assert len(compare) == len(daily) == 3
    for m in compare + daily:
        assert m["color"] == colours[m["name"]], m["name"]
