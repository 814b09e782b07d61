"""How each mode connects: python-oracledb (thin by default) and psycopg, behind one interface."""
