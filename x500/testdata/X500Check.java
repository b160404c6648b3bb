import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.HexFormat;
import javax.security.auth.x500.X500Principal;

// Answers, one line per input line, what Java makes of X.500 names:
//   "N <hex DER>"        -> X500Principal(der).getName(), or "!error"
//   "V <base64 UTF-8>"   -> whether new X500Principal(string) accepts it
// Names are written base64-encoded so that any character survives.
public class X500Check {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        Base64.Encoder b64 = Base64.getEncoder();
        String line;
        while ((line = in.readLine()) != null) {
            String arg = line.substring(2);
            if (line.startsWith("N ")) {
                try {
                    String name = new X500Principal(HexFormat.of().parseHex(arg)).getName();
                    System.out.println(b64.encodeToString(name.getBytes(StandardCharsets.UTF_8)));
                } catch (Exception e) {
                    System.out.println("!error");
                }
            } else {
                String s = new String(Base64.getDecoder().decode(arg), StandardCharsets.UTF_8);
                boolean ok;
                try {
                    new X500Principal(s);
                    ok = true;
                } catch (IllegalArgumentException e) {
                    ok = false;
                }
                System.out.println(ok);
            }
        }
        System.out.flush();
    }
}
