"""How each kind of contact point delivers a message: one module per channel, one registry."""
