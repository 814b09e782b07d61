"""Target secrets: the key ring and vault, allow-listed references, endpoint binding, rotation.

Nothing here imports the web, the agent, the probes or the store: the web and the CLI
write secrets through it, the agent opens them through it.
"""

from app.secrets.references import (
    REF_PREFIXES,
    ReferencePolicy,
    ReferenceRefused,
    is_reference,
)
from app.secrets.vault import Sealed, SecretError, Vault, load_key, load_keys

__all__ = [
    "REF_PREFIXES",
    "ReferencePolicy",
    "ReferenceRefused",
    "Sealed",
    "SecretError",
    "Vault",
    "is_reference",
    "load_key",
    "load_keys",
]
