"""Manager reports: figures, trend and real changes, as HTML, PDF, CSV and mail, on schedules."""
