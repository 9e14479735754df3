package rmqgrpc;

/**
 * How a scenario reports an exception on one line: its class and message, then, when the client
 * wrapped the cause (a producer that fails to start reports an IllegalStateException of its
 * service), {@code CAUSE} with the innermost cause's class and message.
 */
final class Failures {
    private Failures() {
    }

    static String describe(Throwable e) {
        Throwable root = e;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        String text = e.getClass().getSimpleName() + " " + oneLine(e.getMessage());
        if (root != e) {
            text += " CAUSE " + root.getClass().getSimpleName() + " " + oneLine(root.getMessage());
        }
        return text;
    }

    private static String oneLine(String text) {
        return text == null ? "" : text.replace('\n', ' ');
    }
}
