"""How a report looks: server-side SVG charts, the printable HTML, the PDF, the CSV, the mail."""
