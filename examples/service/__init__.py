"""An example service countersign calls after a person confirms (docs/service-call.md)."""
