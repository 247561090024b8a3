"""ArchiMate exchange: The Open Group's Model Exchange File Format (3.1 out; 3.x and 2.1 in) and Archi's CSV
files, mapped to building blocks and relations."""
