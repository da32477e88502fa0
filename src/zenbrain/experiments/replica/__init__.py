"""A replica of *the paper's simulation protocol, not zenbrain*.
