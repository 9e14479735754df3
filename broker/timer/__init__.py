"""Timer messages of RocketMQ 5.x (``TimerMessageStore`` and ``HookUtils.transformTimerMessage``).

A send carrying ``TIMER_DELIVER_MS``, ``TIMER_DELAY_SEC`` or ``TIMER_DELAY_MS`` is stored in
``rmq_sys_wheel_timer`` queue 0 with its due time in ``TIMER_OUT_MS`` and its real topic and queue
in ``REAL_TOPIC`` / ``REAL_QID`` (:func:`broker.timer.service.route_timer_message`); the broker
app's timer loop puts it into its real queue once due (:class:`broker.timer.service.TimerMessageService`).

What this broker keeps instead of Java's ``timerwheel`` / ``timerlog`` / ``timercheck`` files: the
records in ``rmq_sys_wheel_timer`` are the due-time store (each carries its due time), and
``config/timerProgress.json`` records which of them were delivered. Java's wheel files are not
written; the timer topic's records and their properties are the same as Java's.
"""
