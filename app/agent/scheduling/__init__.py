"""When each series runs: phases, the scheduler, run limits, and stored rows to probe specs."""
