"""What readers get: the one projection, pages and cursors, the dashboard's views and counts."""
