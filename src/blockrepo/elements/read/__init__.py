"""Reading elements: what an actor sees (`view`), the SQL that loads and reads them (`repository`,
`reader`), GET by id (`by_id`)."""
