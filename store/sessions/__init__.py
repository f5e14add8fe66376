"""The dashboard's sign-in sessions and sign-ins under way."""
