"""The ingress inbox: each callback and text once, failures recorded once, inbound signals."""
