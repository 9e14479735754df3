"""ACL 2.0 for the remoting protocol: who may call the broker, and what each user may do.

Mirrors RocketMQ 5.3.3's ``auth`` module as the broker uses it; :mod:`broker.auth.service`
assembles the pieces for the composition (``broker/app.py``).
"""
