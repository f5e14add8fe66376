"""What goes back to proposers: conclusions, the result outbox and reminders before expiry."""
