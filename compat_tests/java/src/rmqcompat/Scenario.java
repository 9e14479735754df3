package rmqcompat;

import java.util.Arrays;

/**
 * Scenario runner for the broker compatibility tests: drives one real RocketMQ Java client line
 * (compiled and run against 4.9.8 or 5.3.3; only APIs present in both are used) through one command
 * and reports what happened as one JSON object per line on stdout (flushed per event). Client logs
 * go to stderr or to files; stdout carries only events.
 *
 * <pre>
 * Usage: Scenario COMMAND namesrv=HOST:PORT [key=value ...]
 *   produce  topic= count= [mode=sync|async|oneway] [tags=TagA,TagB] [keys-prefix=] [body-size=]
 *            [props=k1:v1,k2:v2] [delay-level=] [batch=N] [selector-keys=N] [group=] [instance=]
 *            [body-kind=pattern|random] [compress-over=4096] [max-message-size=4194304]
 *            [send-timeout-ms=5000] [retries=2] [trace=false] [stay=S] [timeout=60]
 *            [namespace=] [namespace-v2=] [pace-ms=0] [poll-namesrv-ms=30000]
 *   consume  group= topic= [subscription=*] [expect=N] [duration=S] [model=clustering|broadcasting]
 *            [orderly=false] [from=first|last|timestamp] [timestamp=yyyyMMddHHmmss]
 *            [reconsume-later=K] [max-reconsume=M] [suspend-ms=] [pull-delay-on-error-ms=200]
 *            [instance=] [trace=false] [timeout=60] [namespace=] [namespace-v2=]
 *   litepull group= topic= expect=N [mode=subscribe|assign] [subscription=*] [seek=OFFSET]
 *            [from=first|last|timestamp] [timestamp=] [instance=] [duration=S] [timeout=60]
 *   pull     group= topic= expect=N [subscription=*] [offset=0] [block=false] [commit=false]
 *            [instance=] [duration=S] [timeout=60]
 * </pre>
 *
 * Events: sent, send_error, received, done, error (see compat_tests/scenario.py). Exit status 0 on
 * success; 1 (after an "error" event) on failure, including a consumer that did not get `expect`
 * messages within `timeout`; 3 when the hard watchdog (timeout + 20 s) fires.
 *
 * <p>One class per command: {@link Produce}, {@link Consume}, {@link LitePull}, {@link Pull};
 * {@link Run} holds what they share (arguments, deadline, SIGTERM flag, event output), and
 * {@link Delivery} what the consumers share. compat_tests/java/README.md says how it is built.
 */
public final class Scenario {
    private static final long SHUTDOWN_GRACE_MS = 20000; // the watchdog fires at timeout + this

    private Scenario() {
    }

    public static void main(String[] argv) {
        Run.openOutput();
        int code;
        try {
            if (argv.length < 1) {
                throw new IllegalArgumentException("usage: Scenario COMMAND namesrv=HOST:PORT [key=value ...]");
            }
            Run.start(Arrays.copyOfRange(argv, 1, argv.length), SHUTDOWN_GRACE_MS);
            String cmd = argv[0];
            switch (cmd) {
                case "produce":
                    code = Produce.run();
                    break;
                case "consume":
                    code = Consume.run();
                    break;
                case "litepull":
                    code = LitePull.run();
                    break;
                case "pull":
                    code = Pull.run();
                    break;
                default:
                    throw new IllegalArgumentException("unknown command " + cmd);
            }
        } catch (Throwable e) {
            Run.error(e);
            code = 1;
        }
        Run.finish();
        System.exit(code);
    }
}
