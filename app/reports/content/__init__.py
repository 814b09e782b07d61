"""What a report says: period, scope, figures, verdicts, trend, incidents, mode comparison."""
