"""The evaluation cycle: what rules read, what they see, the state machine, what is owed."""
