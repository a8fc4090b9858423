// Test workload for the agent: an application that names its code the way a hostile or
// obfuscated one may. It defines, from bytes it builds itself, a class whose name holds a
// newline, a control byte and 3000 more characters, with a static method whose name holds
// a BEL and a TAB, then calls that method in a loop until the JIT compiles it. The class file
// is version 49 (no StackMapTable needed); the JVM accepts any character in these names but
// '.', ';', '[' and '/'. Prints "Hostile ready" once the class is defined.
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.lang.reflect.Method;

public class Hostile extends ClassLoader {
    static final String CLASS = "Evil\nName\u0001" + "x".repeat(3000);
    static final String METHOD = "hot\u0007\tspot";

    public static void main(String[] args) throws Exception {
        byte[] b = classFile();
        Class<?> c = new Hostile().defineClass(null, b, 0, b.length);
        Method m = c.getDeclaredMethod(METHOD, int.class);
        System.out.println("Hostile ready");
        System.out.flush();
        long sink = 0;
        while (true)
            sink += (Integer) m.invoke(null, 1000 + (int) (sink & 7));
    }

    // public class <CLASS> { public static int <METHOD>(int n) { int i = 0; while (i < n) i++; return i; } }
    static byte[] classFile() throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        DataOutputStream o = new DataOutputStream(bytes);
        o.writeInt(0xCAFEBABE);
        o.writeShort(0);  // minor
        o.writeShort(49); // major: Java 5, verified by type inference
        o.writeShort(8);  // constant pool count + 1
        o.writeByte(1); o.writeUTF(CLASS);              // #1
        o.writeByte(7); o.writeShort(1);                // #2 Class #1
        o.writeByte(1); o.writeUTF("java/lang/Object"); // #3
        o.writeByte(7); o.writeShort(3);                // #4 Class #3
        o.writeByte(1); o.writeUTF(METHOD);             // #5
        o.writeByte(1); o.writeUTF("(I)I");             // #6
        o.writeByte(1); o.writeUTF("Code");             // #7
        o.writeShort(0x21); // ACC_PUBLIC | ACC_SUPER
        o.writeShort(2);    // this
        o.writeShort(4);    // super
        o.writeShort(0);    // interfaces
        o.writeShort(0);    // fields
        o.writeShort(1);    // methods
        o.writeShort(0x09); // ACC_PUBLIC | ACC_STATIC
        o.writeShort(5);
        o.writeShort(6);
        o.writeShort(1);    // attributes: Code
        byte[] code = {
            0x03,                         // 0: iconst_0
            0x3c,                         // 1: istore_1
            0x1b,                         // 2: iload_1
            0x1a,                         // 3: iload_0
            (byte) 0xa2, 0x00, 0x09,      // 4: if_icmpge 13
            (byte) 0x84, 0x01, 0x01,      // 7: iinc 1, 1
            (byte) 0xa7, (byte) 0xff, (byte) 0xf8, // 10: goto 2
            0x1b,                         // 13: iload_1
            (byte) 0xac,                  // 14: ireturn
        };
        o.writeShort(7);
        o.writeInt(2 + 2 + 4 + code.length + 2 + 2);
        o.writeShort(2); // max stack
        o.writeShort(2); // max locals
        o.writeInt(code.length);
        o.write(code);
        o.writeShort(0); // exception table
        o.writeShort(0); // code attributes
        o.writeShort(0); // class attributes
        return bytes.toByteArray();
    }
}
