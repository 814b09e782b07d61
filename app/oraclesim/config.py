"""Simulator configuration: zero-config defaults and a YAML file for more.

See docs/oraclesim.md for the YAML reference. Bad input raises ConfigError naming the
file and the field.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

MODES = ("dedicated", "shared", "pooled")
PHASES = ("accept", "negotiate", "logon", "ping", "query", "commit", "logoff", "tls")
TLS_VERSIONS = ("1.2", "1.3")
ROOT = "CDB$ROOT"


class ConfigError(ValueError):
    """A configuration problem: what is wrong and where."""


@dataclass(slots=True)
class PhaseLatency:
    median_ms: float
    spread: float = 0.25  # sigma of the lognormal


@dataclass(slots=True)
class LatencyProfile:
    phases: dict[str, PhaseLatency]
    drift: float = 0.15  # +- fraction over the day (sinusoid)
    spike_probability: float = 0.002
    spike_factor: float = 6.0
    load: float = 0.10  # extra fraction per other logon in progress


def _profile(accept: float, logon: float, logoff: float, load: float) -> LatencyProfile:
    phases = {
        "accept": PhaseLatency(accept, 0.3),
        "negotiate": PhaseLatency(0.4, 0.3),
        "logon": PhaseLatency(logon, 0.25),
        "ping": PhaseLatency(0.25, 0.3),
        "query": PhaseLatency(0.5, 0.3),
        "commit": PhaseLatency(1.0, 0.3),
        "logoff": PhaseLatency(logoff, 0.3),
        "tls": PhaseLatency(0.0, 0.3),  # the handshake's own crypto is real; nothing added
    }
    return LatencyProfile(phases=phases, load=load)


def default_latency() -> dict[str, LatencyProfile]:
    """Per connect+disconnect about 61 ms dedicated, 44 ms shared, 46 ms pooled."""
    return {
        "dedicated": _profile(30.0, 25.6, 5.0, 0.25),
        "shared": _profile(8.0, 31.6, 4.0, 0.08),
        "pooled": _profile(10.0, 31.6, 4.0, 0.10),
    }


@dataclass(slots=True)
class ServiceConfig:
    name: str
    modes: tuple[str, ...] = MODES
    latency: dict[str, LatencyProfile] = field(default_factory=default_latency)
    shared_redirect: bool = False
    container: str | None = None  # in a CDB: the PDB (default: the service name) or CDB$ROOT

    def con_name(self, cdb: bool) -> str:
        return (self.container or self.name) if cdb else self.name


@dataclass(slots=True)
class UserConfig:
    name: str
    password: str
    locked: bool = False
    # V$/GV$ views (and DBA_ views) this user may select from; None: every one (a DBA, or
    # SELECT ANY DICTIONARY). A view not granted answers ORA-00942, as in Oracle.
    grants: frozenset[str] | None = None

    def may_read(self, view: str) -> bool:
        return self.grants is None or view.upper() in self.grants


@dataclass(slots=True)
class InstanceConfig:
    name: str
    number: int


@dataclass(slots=True)
class TlsConfig:
    """The tcps listener: certificate chain and key (PEM files) and TLS versions."""

    cert: str
    key: str
    port: int = 0
    min_version: str = "1.2"
    max_version: str = "1.3"


@dataclass(slots=True)
class SimConfig:
    host: str = "127.0.0.1"
    port: int = 1521
    services: dict[str, ServiceConfig] = field(default_factory=dict)
    users: dict[str, UserConfig] = field(default_factory=dict)
    no_latency: bool = False
    fast_auth: bool = False
    version: str = "19.24"
    pbkdf2_vgen: int = 64
    pbkdf2_sder: int = 3
    sdu: int = 8192
    instance_name: str = "FREE"
    db_name: str = "FREE"
    server_host: str = "oraclesim"
    scratch_tables: tuple[str, ...] = ("CONNWATCH_PROBE",)
    shared_servers: int = 4
    max_shared_servers: int | None = None  # shared servers may grow to this (default: no growth)
    drcp_max_servers: int = 40
    drcp_wait_timeout_s: float = 2.0
    processes: int = 300  # the PROCESSES parameter (per instance)
    cdb: bool = False  # a container database: services name PDBs (or CDB$ROOT)
    per_pdb_drcp: bool = False  # ENABLE_PER_PDB_DRCP (21c and later)
    instances: tuple[InstanceConfig, ...] = ()  # empty: one instance, instance_name / 1
    tls: TlsConfig | None = None

    @property
    def sessions(self) -> int:
        """The SESSIONS parameter's default: 1.5 x PROCESSES + 22."""
        return int(1.5 * self.processes + 22)

    def instance_list(self) -> tuple[InstanceConfig, ...]:
        return self.instances or (InstanceConfig(self.instance_name, 1),)

    @classmethod
    def default(cls, no_latency: bool = False) -> SimConfig:
        return cls(
            services={
                "FREEPDB1": ServiceConfig("FREEPDB1"),
                "DEDONLY": ServiceConfig("DEDONLY", modes=("dedicated",)),
            },
            users={"SCOTT": UserConfig("scott", "tiger")},
            no_latency=no_latency,
        )

    @classmethod
    def from_yaml(cls, path: str | Path) -> SimConfig:
        p = Path(path)
        try:
            raw = yaml.safe_load(p.read_text())
        except OSError as e:
            raise ConfigError(f"{p}: cannot read: {e.strerror}") from None
        except yaml.YAMLError as e:
            raise ConfigError(f"{p}: not valid YAML: {e}") from None
        return cls.from_dict(raw if raw is not None else {}, source=str(p))

    @classmethod
    def from_dict(cls, raw: Any, source: str = "<config>") -> SimConfig:
        return _Loader(source).load(raw)

    @property
    def version_tuple(self) -> tuple[int, int]:
        major, _, minor = self.version.partition(".")
        return int(major), int(minor or 0)

    def copy(self) -> SimConfig:
        return copy.deepcopy(self)


class _Loader:
    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, where: str, msg: str) -> ConfigError:
        return ConfigError(f"{self.source}: {where}: {msg}")

    def mapping(self, value: Any, where: str, keys: set[str]) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(where, "must be a mapping")
        unknown = sorted(set(map(str, value)) - keys)
        if unknown:
            raise self.fail(where, f"unknown field {unknown[0]!r} (known: {sorted(keys)})")
        return {str(k): v for k, v in value.items()}

    def number(self, value: Any, where: str, lo: float, hi: float) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.fail(where, "must be a number")
        if not lo <= value <= hi:
            raise self.fail(where, f"must be between {lo} and {hi}")
        return float(value)

    def integer(self, value: Any, where: str, lo: int, hi: int) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(where, "must be an integer")
        if not lo <= value <= hi:
            raise self.fail(where, f"must be between {lo} and {hi}")
        return value

    def text(self, value: Any, where: str) -> str:
        if not isinstance(value, str) or not value.strip():
            raise self.fail(where, "must be a non-empty string")
        return value.strip()

    def flag(self, value: Any, where: str) -> bool:
        if not isinstance(value, bool):
            raise self.fail(where, "must be true or false")
        return value

    def load(self, raw: Any) -> SimConfig:
        top = self.mapping(
            raw,
            "top level",
            {"listener", "services", "users", "no_latency", "fast_auth", "version", "pbkdf2"}
            | {"sdu", "instance_name", "db_name", "server_host", "scratch_tables"}
            | {
                "shared_servers",
                "max_shared_servers",
                "drcp",
                "processes",
                "cdb",
                "per_pdb_drcp",
                "instances",
                "tls",
            },
        )
        cfg = SimConfig.default()
        if "listener" in top:
            lst = self.mapping(top["listener"], "listener", {"host", "port"})
            if "host" in lst:
                cfg.host = self.text(lst["host"], "listener.host")
            if "port" in lst:
                cfg.port = self.integer(lst["port"], "listener.port", 0, 65535)
        for key in ("no_latency", "fast_auth", "cdb", "per_pdb_drcp"):
            if key in top:
                setattr(cfg, key, self.flag(top[key], key))
        for key in ("instance_name", "db_name", "server_host"):
            if key in top:
                setattr(cfg, key, self.text(top[key], key))
        if "version" in top:
            cfg.version = self.text(str(top["version"]), "version")
            try:
                cfg.version_tuple  # noqa: B018
            except ValueError:
                raise self.fail("version", "must look like 19.24 or 23.26") from None
        if "sdu" in top:
            cfg.sdu = self.integer(top["sdu"], "sdu", 512, 2097152)
        if "pbkdf2" in top:
            pb = self.mapping(top["pbkdf2"], "pbkdf2", {"vgen", "sder"})
            if "vgen" in pb:
                cfg.pbkdf2_vgen = self.integer(pb["vgen"], "pbkdf2.vgen", 1, 10_000_000)
            if "sder" in pb:
                cfg.pbkdf2_sder = self.integer(pb["sder"], "pbkdf2.sder", 1, 10_000_000)
        if "scratch_tables" in top:
            tables = top["scratch_tables"]
            if not isinstance(tables, list):
                raise self.fail("scratch_tables", "must be a list of table names")
            cfg.scratch_tables = tuple(
                self.text(t, f"scratch_tables[{i}]").upper() for i, t in enumerate(tables)
            )
        if "shared_servers" in top:
            cfg.shared_servers = self.integer(top["shared_servers"], "shared_servers", 1, 1000)
        if "drcp" in top:
            d = self.mapping(top["drcp"], "drcp", {"max_servers", "wait_timeout_s"})
            if "max_servers" in d:
                cfg.drcp_max_servers = self.integer(d["max_servers"], "drcp.max_servers", 1, 100000)
            if "wait_timeout_s" in d:
                cfg.drcp_wait_timeout_s = self.number(
                    d["wait_timeout_s"], "drcp.wait_timeout_s", 0, 3600
                )
        if "max_shared_servers" in top:
            cfg.max_shared_servers = self.integer(
                top["max_shared_servers"], "max_shared_servers", 1, 1000
            )
        if "processes" in top:
            cfg.processes = self.integer(top["processes"], "processes", 30, 100000)
        if "instances" in top:
            cfg.instances = self.instances(top["instances"])
        if "tls" in top:
            cfg.tls = self.tls(top["tls"])
        if "users" in top:
            cfg.users = self.users(top["users"])
        if "services" in top:
            cfg.services = self.services(top["services"])
        return cfg

    def users(self, raw: Any) -> dict[str, UserConfig]:
        if not isinstance(raw, list) or not raw:
            raise self.fail("users", "must be a non-empty list")
        out: dict[str, UserConfig] = {}
        for i, item in enumerate(raw):
            where = f"users[{i}]"
            u = self.mapping(item, where, {"name", "password", "locked", "grants"})
            for req in ("name", "password"):
                if req not in u:
                    raise self.fail(where, f"missing field {req!r}")
            name = self.text(u["name"], f"{where}.name")
            locked = self.flag(u.get("locked", False), f"{where}.locked")
            user = UserConfig(name, self.text(str(u["password"]), where), locked)
            if "grants" in u:
                grants = u["grants"]
                if not isinstance(grants, list):
                    raise self.fail(f"{where}.grants", "must be a list of view names")
                user.grants = frozenset(
                    self.text(g, f"{where}.grants[{j}]").upper() for j, g in enumerate(grants)
                )
            out[name.upper()] = user
        return out

    def instances(self, raw: Any) -> tuple[InstanceConfig, ...]:
        if not isinstance(raw, list) or not raw:
            raise self.fail("instances", "must be a non-empty list")
        out: list[InstanceConfig] = []
        for i, item in enumerate(raw):
            where = f"instances[{i}]"
            d = self.mapping(item, where, {"name", "number"})
            for req in ("name", "number"):
                if req not in d:
                    raise self.fail(where, f"missing field {req!r}")
            inst = InstanceConfig(
                self.text(d["name"], f"{where}.name").upper(),
                self.integer(d["number"], f"{where}.number", 1, 255),
            )
            if any(o.name == inst.name or o.number == inst.number for o in out):
                raise self.fail(where, "instance names and numbers must be unique")
            out.append(inst)
        return tuple(out)

    def tls(self, raw: Any) -> TlsConfig:
        d = self.mapping(raw, "tls", {"port", "cert", "key", "min_version", "max_version"})
        for req in ("cert", "key"):
            if req not in d:
                raise self.fail("tls", f"missing field {req!r}")
        base = Path(self.source).parent if Path(self.source).is_file() else Path.cwd()
        files = []
        for key in ("cert", "key"):
            path = base / self.text(d[key], f"tls.{key}")
            if not path.is_file():
                raise self.fail(f"tls.{key}", f"no such file: {path}")
            files.append(str(path))
        tls = TlsConfig(files[0], files[1])
        if "port" in d:
            tls.port = self.integer(d["port"], "tls.port", 0, 65535)
        for key in ("min_version", "max_version"):
            if key in d:
                value = str(d[key])
                if value not in TLS_VERSIONS:
                    raise self.fail(f"tls.{key}", f"must be one of {TLS_VERSIONS}")
                setattr(tls, key, value)
        if TLS_VERSIONS.index(tls.min_version) > TLS_VERSIONS.index(tls.max_version):
            raise self.fail("tls", "min_version is above max_version")
        return tls

    def services(self, raw: Any) -> dict[str, ServiceConfig]:
        if not isinstance(raw, list) or not raw:
            raise self.fail("services", "must be a non-empty list")
        out: dict[str, ServiceConfig] = {}
        keys = {"name", "modes", "latency", "shared_redirect", "container"}
        for i, item in enumerate(raw):
            where = f"services[{i}]"
            s = self.mapping(item, where, keys)
            if "name" not in s:
                raise self.fail(where, "missing field 'name'")
            svc = ServiceConfig(self.text(s["name"], f"{where}.name").upper())
            if "modes" in s:
                modes = s["modes"]
                if not isinstance(modes, list) or not modes:
                    raise self.fail(f"{where}.modes", f"must be a non-empty list of {MODES}")
                for m in modes:
                    if m not in MODES:
                        raise self.fail(f"{where}.modes", f"unknown mode {m!r} (known: {MODES})")
                svc.modes = tuple(modes)
            if "shared_redirect" in s:
                svc.shared_redirect = self.flag(s["shared_redirect"], f"{where}.shared_redirect")
            if "container" in s:
                svc.container = self.text(s["container"], f"{where}.container").upper()
            if "latency" in s:
                self.latency(s["latency"], f"{where}.latency", svc)
            out[svc.name] = svc
        return out

    def latency(self, raw: Any, where: str, svc: ServiceConfig) -> None:
        lat = self.mapping(raw, where, set(MODES))
        for mode, prof_raw in lat.items():
            w = f"{where}.{mode}"
            prof = svc.latency[mode]
            p = self.mapping(
                prof_raw, w, set(PHASES) | {"drift", "spike_probability"} | {"spike_factor", "load"}
            )
            for phase in PHASES:
                if phase in p:
                    ph = self.mapping(p[phase], f"{w}.{phase}", {"median_ms", "spread"})
                    if "median_ms" in ph:
                        prof.phases[phase].median_ms = self.number(
                            ph["median_ms"], f"{w}.{phase}.median_ms", 0, 600_000
                        )
                    if "spread" in ph:
                        prof.phases[phase].spread = self.number(
                            ph["spread"], f"{w}.{phase}.spread", 0, 5
                        )
            if "drift" in p:
                prof.drift = self.number(p["drift"], f"{w}.drift", 0, 0.95)
            if "spike_probability" in p:
                prof.spike_probability = self.number(
                    p["spike_probability"], f"{w}.spike_probability", 0, 1
                )
            if "spike_factor" in p:
                prof.spike_factor = self.number(p["spike_factor"], f"{w}.spike_factor", 1, 1000)
            if "load" in p:
                prof.load = self.number(p["load"], f"{w}.load", 0, 100)
