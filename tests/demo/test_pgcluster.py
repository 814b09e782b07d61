"""The embedded cluster's service account: when connwatch runs as root, PostgreSQL's
files go to an unprivileged account and that account's own primary group, which need
not be named like the account (``nobody`` is in ``nogroup`` on Debian-based images, and
there is no group ``nobody``: chown to "nobody:nobody" failed and the store never
initialised)."""

from __future__ import annotations

import grp
import os
import pwd
import shutil
from pathlib import Path

import pytest

from app.demo.pgcluster import _service_group, _service_user


def test_nobody_gets_nogroup_not_a_group_named_like_it(tmp_path: Path) -> None:
    with pytest.raises(KeyError):
        grp.getgrnam("nobody")  # the trap: no such group on Debian
    assert _service_group("nobody") == "nogroup"
    if os.geteuid() == 0:  # what the cluster does with it (only root may give files away)
        shutil.chown(tmp_path, "nobody", _service_group("nobody"))
        st = tmp_path.stat()
        assert (st.st_uid, grp.getgrgid(st.st_gid).gr_name) == (65534, "nogroup")


def test_the_service_accounts_group_is_its_primary_group() -> None:
    user = _service_user()
    assert user in ("postgres", "nobody")
    group = _service_group()
    assert group == _service_group(user)
    assert grp.getgrnam(group).gr_gid == pwd.getpwnam(user).pw_gid
