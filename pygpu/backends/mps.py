"""pygpu has no Metal backend: these answer False, as torch's do on
machines without one."""


def is_available():
    return False


def is_built():
    return False
