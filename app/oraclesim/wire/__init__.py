"""Oracle Net and TTC on the wire: packets, primitives, messages, negotiation, requests."""
