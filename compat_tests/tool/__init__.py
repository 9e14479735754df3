"""``rmq-compat``: the compatibility scenarios as a tool pointed at any RocketMQ cluster.

``cli`` parses the options, ``catalogue`` holds the scenarios (one module per feature family),
``runner`` runs a selection against a target with time limits and clean-up, ``clients`` starts
the unmodified client programs of ``compat_tests`` (``javaenv`` finds or builds the Java programs'
class paths, ``goenv`` the Go program's binary, ``prepare`` builds what a selection needs first),
``admin`` creates and deletes each scenario's topics and groups, and ``report`` writes the table,
JSON, JUnit, HTML and the difference report. docs/compat-tool.md is the user's guide.
"""
