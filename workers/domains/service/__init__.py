"""service.call: a person confirms one call of an action your own service offers; countersign
then POSTs it once, signed, with the operation's stable client id as its Idempotency-Key
(docs/service-call.md)."""
