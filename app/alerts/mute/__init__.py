"""What keeps alerts quiet: silences, recurring maintenance windows, acknowledgements."""
