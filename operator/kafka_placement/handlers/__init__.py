"""kopf handlers, one thin module per custom resource kind; importing ``register`` registers them all."""
