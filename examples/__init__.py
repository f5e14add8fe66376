"""Sample proposals and an example service (examples/service) countersign calls."""
