"""Targets as code: the YAML schema, its validation, and messages naming file, entry and field.

The file format (``targets.example.yaml`` shows every field)::

    targets:
      - name: sales-prod            # unique
        kind: oracle                # oracle | postgres
        dsn: dbhost:1521/SALES      # Easy Connect (no :mode suffix) or a tnsnames alias
        username: connwatch
        password: env:SALES_PW      # env:NAME | file:PATH | a literal (encrypted on import)
        modes:
          - name: pooled            # kind defaults to the name
            params: {cclass: CONNWATCH, purity: self}
            probes:
              - {probe: connping, interval: 10s, timeout: 5s}

Import is an upsert by name (targets), by name within a target (modes) and by
(probe, site) within a mode (series); ``prune`` also removes what the file does
not name. Everything is validated before anything is written, and the whole import
is one transaction.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidatorFunctionWrapHandler,
    field_validator,
    model_validator,
)

from app.models import ORACLE_MODES, POSTGRES_MODES
from app.targets import safeyaml
from app.targets.durations import (
    MAX_SERIES_MS,
    Duration,
    format_duration_ms,
    parse_duration_ms,
)
from app.targets.params import (
    ParamError,
    connection_param_errors,
    easy_connect_error,
    probe_params,
)

_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,62}$"


def _check_name(v: str) -> str:
    """A name in words, not as a regular expression (it ends up in URLs and file names)."""
    if not re.fullmatch(_NAME, v):
        raise ValueError(
            f"{v!r} is not a valid name: use 1 to 63 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    return v


Name = Annotated[str, AfterValidator(_check_name)]
SERVERSTATS_INTERVAL_MS = 60_000


_UNTIL_SLASH_OR_AT = re.compile(r"[^/@]*")


def credentials_in(dsn: str) -> bool:
    """Whether ``dsn`` holds ``user/password@host`` or ``scheme://user:password@host``.

    The regular expressions ``[^/@\\s]+/[^@\\s]+@`` and ``://[^/@\\s]+:[^@\\s]*@`` say
    the same, but backtrack in quadratic time: a 60 KB dsn took 50 s of the event loop.
    This reads each word once from the right, and jumps between ``://`` marks.
    """
    for word in dsn.split():
        next_at = -1
        for i in range(len(word) - 1, 0, -1):
            c = word[i]
            if c == "@":
                next_at = i
            elif c == "/" and next_at > i + 1 and word[i - 1] not in "/@":
                return True
        last_at = word.rfind("@")
        mark = word.find("://")
        while mark >= 0:
            begin = mark + 3
            m = _UNTIL_SLASH_OR_AT.match(word, begin)
            colon = word.find(":", begin + 1, m.end() if m else begin)
            if colon >= 0 and last_at > colon:
                return True
            mark = word.find("://", mark + 1)
    return False


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)


DEFAULT_INTERVAL_MS = 10_000  # a probe without an interval, or a mode without probes


class ProbeEntry(_Strict):
    probe: Literal["connping", "sessionping", "poolacquire", "commit", "sweep", "serverstats"]
    # both are stored as int4 milliseconds: at most 24d (MAX_SERIES_MS)
    interval: Duration = Field(default=DEFAULT_INTERVAL_MS, ge=100)
    timeout: Duration | None = Field(default=None, gt=0)
    site: Name = "default"
    enabled: bool = True
    params: dict[str, Any] = Field(default_factory=dict)

    @field_validator("interval", "timeout", mode="wrap")
    @classmethod
    def _fits_the_store(cls, given: Any, handler: ValidatorFunctionWrapHandler) -> int | None:
        # the store keeps both as int4 milliseconds (MAX_SERIES_MS); 600h overflowed it
        v: int | None = handler(given)
        if v is not None and v > MAX_SERIES_MS:
            shown = given.strip() if isinstance(given, str) else format_duration_ms(v)
            raise ValueError(
                f"{shown} is longer than {format_duration_ms(MAX_SERIES_MS)}, "
                "the longest the store keeps"
            )
        return v

    @model_validator(mode="after")
    def _timeout_within_interval(self) -> ProbeEntry:
        if self.probe == "serverstats" and "interval" not in self.model_fields_set:
            self.interval = SERVERSTATS_INTERVAL_MS  # the V$ views are read once a minute
        if self.timeout is None:
            self.timeout = min(self.interval, 5_000)
        if self.timeout > self.interval:
            raise ValueError(
                f"timeout ({format_duration_ms(self.timeout)}) must not exceed interval "
                f"({format_duration_ms(self.interval)}): runs of a series never overlap"
            )
        try:
            probe_params(self.probe, self.params)
        except ParamError as exc:
            raise ValueError(f"params: {exc}") from None
        return self


class ModeEntry(_Strict):
    name: Name
    kind: str | None = None
    transport: Literal["tcp", "tcps", "ipc", "unix"] = "tcp"
    enabled: bool = True
    params: dict[str, Any] = Field(default_factory=dict)
    probes: list[ProbeEntry] = Field(
        # the interval given as a duration: a bare number would be read as seconds
        default_factory=lambda: [ProbeEntry(probe="connping", interval="10s")]
    )

    @model_validator(mode="after")
    def _kind_defaults_to_name(self) -> ModeEntry:
        if self.kind is None:
            self.kind = self.name
        seen: set[tuple[str, str]] = set()
        for i, p in enumerate(self.probes):
            key = (p.probe, p.site)
            if key in seen:
                raise ValueError(f"probes[{i}]: probe {p.probe!r} at site {p.site!r} listed twice")
            seen.add(key)
        return self


class TargetEntry(_Strict):
    name: Name
    kind: Literal["oracle", "postgres"]
    # lengths: far above any real value, so a hostile one stops here
    dsn: str = Field(min_length=1, max_length=4096)
    username: str = Field(min_length=1, max_length=256)
    password: str | None = Field(default=None, max_length=1024)
    password_encrypted: str | None = Field(default=None, max_length=4096)
    description: str = Field(default="", max_length=2000)
    enabled: bool = True
    labels: dict[str, str] = Field(default_factory=dict)
    params: dict[str, Any] = Field(default_factory=dict)
    modes: list[ModeEntry] = Field(min_length=1)

    @field_validator("dsn")
    @classmethod
    def _no_credentials_in_dsn(cls, v: str) -> str:
        if credentials_in(v):
            raise ValueError("the dsn must not contain credentials: use username and password")
        return v

    @model_validator(mode="after")
    def _check(self) -> TargetEntry:
        if self.password is not None and self.password_encrypted is not None:
            raise ValueError("give either password or password_encrypted, not both")
        wrong = easy_connect_error(self.dsn, server_type_allowed=False)
        if self.kind == "oracle" and wrong:
            raise ValueError(f"dsn: {wrong}")
        allowed = ORACLE_MODES if self.kind == "oracle" else POSTGRES_MODES
        names: set[str] = set()
        for i, m in enumerate(self.modes):
            if m.kind not in allowed:
                raise ValueError(
                    f"modes[{i}].kind: {m.kind!r} is not {'an' if self.kind == 'oracle' else 'a'} "
                    f"{self.kind} mode "
                    f"(one of {', '.join(allowed)})"
                )
            if m.name in names:
                raise ValueError(f"modes[{i}].name: mode {m.name!r} listed twice")
            names.add(m.name)
            for j, p in enumerate(m.probes or ()):
                if p.probe == "serverstats" and self.kind != "oracle":
                    raise ValueError(
                        f"modes[{i}].probes[{j}].probe: serverstats reads Oracle's V$ views; "
                        f"{self.kind} targets have none"
                    )
        for where, params in [("params", self.params)] + [
            (f"modes[{i}].params", m.params) for i, m in enumerate(self.modes)
        ]:
            errors = connection_param_errors(self.kind, params, parse_duration_ms)
            if errors:
                raise ValueError(f"{where}: {'; '.join(errors)}")
        return self


class TargetsFile(_Strict):
    targets: list[TargetEntry] = Field(default_factory=list)

    @model_validator(mode="after")
    def _unique_names(self) -> TargetsFile:
        seen: set[str] = set()
        for i, t in enumerate(self.targets):
            if t.name in seen:
                raise ValueError(f"targets[{i}].name: target {t.name!r} listed twice")
            seen.add(t.name)
        return self


class TargetsFileError(ValueError):
    """A targets file is unusable; ``errors`` are ready-to-print lines naming file/entry/field."""

    def __init__(self, errors: list[str]) -> None:
        super().__init__("\n".join(errors))
        self.errors = errors


def _entry_label(raw: Any, index: int) -> str:
    name = None
    if isinstance(raw, dict):
        targets_list = raw.get("targets")
        if isinstance(targets_list, list) and index < len(targets_list):
            item = targets_list[index]
            if isinstance(item, dict):
                name = item.get("name")
    return f"target #{index + 1}" + (f" {name!r}" if name else "")


def _format_loc(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


_MSG_PATH = re.compile(r"^([A-Za-z_]+(?:\[\d+\])?(?:\.[A-Za-z_]+(?:\[\d+\])?)*): (.*)$", re.S)


def _split_path(path: str) -> tuple[int | str, ...]:
    out: list[int | str] = []
    for part in re.findall(r"[A-Za-z_]+|\[\d+\]", path):
        out.append(int(part[1:-1]) if part.startswith("[") else part)
    return tuple(out)


def parse_targets(text: str, source: str) -> TargetsFile:
    """Parse and validate a targets document; raise :class:`TargetsFileError` on any problem."""
    try:
        raw = safeyaml.load(text)  # limits on size, depth and aliases before expansion
    except safeyaml.YamlLimitError as exc:
        raise TargetsFileError([f"{source}: refused: {exc}"]) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}:{mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise TargetsFileError([f"{source}{where}: not valid YAML: {problem}"]) from None
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise TargetsFileError([f"{source}: expected a mapping with a 'targets' list at the top"])
    try:
        return TargetsFile.model_validate(raw)
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            msg = err["msg"].removeprefix("Value error, ")
            loc = tuple(err["loc"])
            # model-level checks name their own field path ("modes[0].kind: ..."): merge it
            m = _MSG_PATH.match(msg)
            if m:
                loc += _split_path(m.group(1))
                msg = m.group(2)
            if len(loc) >= 2 and loc[0] == "targets" and isinstance(loc[1], int):
                field = _format_loc(loc[2:]) or "(entry)"
                lines.append(f"{source}: {_entry_label(raw, loc[1])}: {field}: {msg}")
            else:
                lines.append(f"{source}: {_format_loc(loc) or '(top)'}: {msg}")
        raise TargetsFileError(lines) from None


def load_targets_file(path: Path) -> TargetsFile:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise TargetsFileError([f"{path}: cannot read: {exc.strerror}"]) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise TargetsFileError(
            [
                f"{path}: line {line}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset "
                f"{exc.start})"
            ]
        ) from None
    return parse_targets(text, str(path))
