"""Legion mail: the envelope and routes, the five-state postman, the mail service."""
