"""Forms, one module per page that needs one."""
