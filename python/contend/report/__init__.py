"""Reports: terminal tables (rich), plots (matplotlib) and a static HTML page, from plain data."""
