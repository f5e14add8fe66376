"""Finance venues: the one contract (`contract`), the data every venue speaks (`model`)."""
