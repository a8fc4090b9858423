// A deep Java stack for the stack walker's fixtures (tests/walk/capture.sh): thread "worker-deep"
// recurses through down -> even|odd -> down ... DEPTH levels (two Java frames each, none
// inlined: the methods are excluded from inlining on the command line) and spins at the bottom,
// so nearly every sample is 2 * DEPTH + 3 Java frames deep.
public class Deep {
    static volatile long sink;

    public static void main(String[] args) {
        int depth = Integer.parseInt(args[0]);
        Thread t = new Thread(() -> {
            while (true)
                down(depth);
        }, "worker-deep");
        t.start();
        System.out.println("Deep ready");
    }

    static void down(int n) {
        if (n <= 0)
            spin();
        else if ((n & 1) == 0)
            even(n - 1);
        else
            odd(n - 1);
    }

    static void even(int n) {
        down(n);
        sink++;
    }

    static void odd(int n) {
        down(n);
        sink--;
    }

    static void spin() {
        long x = sink;
        for (int i = 0; i < 2000000; i++)
            x = x * 31 + i;
        sink = x;
    }
}
