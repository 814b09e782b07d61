"""Charts, comparisons and sample tables: identical requests within
CONNWATCH_READS_CACHE_S share one read; a configuration change is read at once."""

from __future__ import annotations

import json
import re
from datetime import timedelta

from fastapi.testclient import TestClient
from sqlalchemy import text
from sqlalchemy.engine import Engine

from app.secrets import Vault
from app.store.write.ingest import write_samples
from tests.fixtures.auth import web_client
from tests.web.data import _ok, seed


def _reads(client: TestClient) -> int:
    return int(client.app.state.reuse.recent.computed)  # type: ignore[attr-defined]


def test_identical_requests_share_a_read_until_the_configuration_changes(
    migrated_engine: Engine, vault: Vault
) -> None:
    seeded = seed(migrated_engine, vault, hours=0.2)
    sid = seeded.series[("sales", "dedicated")]
    url = "/api/v1/samples?target=sales&mode=dedicated&limit=3"
    with web_client(migrated_engine, vault, role="viewer", reads_cache_s=60) as c:
        first = c.get(url).json()
        assert len(first["samples"]) == 3 and _reads(c) == 1
        newest = seeded.now - timedelta(seconds=1)  # after every seeded sample
        with migrated_engine.begin() as conn:
            write_samples(conn, [_ok(sid, newest, 600.0, 1.0, 9_999)])
        assert c.get(url).json() == first  # within the minute: the same read
        assert _reads(c) == 1
        other = c.get(url.replace("limit=3", "limit=4")).json()  # another request: read now
        assert _reads(c) == 2 and other["samples"][0]["logon_ms"] > 500
        with migrated_engine.begin() as conn:  # a configuration change: read at once
            conn.execute(text("update series set enabled = false where id = :s"), {"s": sid})
        again = c.get(url).json()
        assert _reads(c) == 3 and again["samples"][0]["logon_ms"] > 500


def test_without_reuse_every_request_reads(migrated_engine: Engine, vault: Vault) -> None:
    seeded = seed(migrated_engine, vault, hours=0.2)
    sid = seeded.series[("sales", "dedicated")]
    url = "/api/v1/samples?target=sales&mode=dedicated&limit=3"
    with web_client(migrated_engine, vault, role="viewer", reads_cache_s=0) as c:
        c.get(url)
        with migrated_engine.begin() as conn:
            write_samples(conn, [_ok(sid, seeded.now - timedelta(seconds=1), 600.0, 1.0, 9_999)])
        assert c.get(url).json()["samples"][0]["logon_ms"] > 500 and _reads(c) == 2


def test_the_compare_page_and_its_api_share_one_read(migrated_engine: Engine, vault: Vault) -> None:
    seed(migrated_engine, vault, hours=0.2)
    with web_client(migrated_engine, vault, role="viewer", reads_cache_s=60) as c:
        page = c.get("/compare?target=sales&range=1h")
        assert page.status_code == 200 and _reads(c) >= 1
        after_page = _reads(c)  # the comparison and the logon costs
        api = c.get("/api/v1/compare?target=sales&range=1h").json()
        assert _reads(c) == after_page
        embedded = re.search(r'<script[^>]*id="compare-data"[^>]*>(.*?)</script>', page.text, re.S)
        assert embedded is not None  # the page's first answer is the API's
        assert json.loads(embedded.group(1).replace("<\\/", "</")) == api
        assert [m["name"] for m in api["modes"]] == ["dedicated", "shared", "pooled"]
