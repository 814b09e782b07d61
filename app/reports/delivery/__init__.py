"""How reports reach people: subscriptions, their schedule (one sender), sending, the archive."""
