package zoocfg

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseJAAS(t *testing.T) {
	for _, tc := range []struct {
		name, in, section string
		want              map[string]string
	}{
		{"zookeeper's example", `Server {
       org.apache.zookeeper.server.auth.DigestLoginModule required
       user_super="adminsecret"
       user_bob="bobsecret";
};`, "Server", map[string]string{"super": "adminsecret", "bob": "bobsecret"}},
		{"other sections, comments, unquoted values", `// the client side
Client {
  org.apache.zookeeper.server.auth.DigestLoginModule required username="bob" password="bobsecret";
};
/* the server
   side */
Server {
  org.apache.zookeeper.server.auth.DigestLoginModule Required
    user_alice=wonder debug="true" user_q="a \"quoted\" ; secret";
};`, "Server", map[string]string{"alice": "wonder", "q": `a "quoted" ; secret`}},
		{"named section", `QuorumServer { org.apache.zookeeper.server.auth.DigestLoginModule required user_x="y"; };
Other { com.example.Nope required; };`, "QuorumServer", map[string]string{"x": "y"}},
		{"no users", `Server { org.apache.zookeeper.server.auth.DigestLoginModule required; };`, "Server", map[string]string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseJAAS(strings.NewReader(tc.in), tc.section)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestParseJAASErrors(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"missing section", `Client { org.apache.zookeeper.server.auth.DigestLoginModule required; };`, `no JAAS section named "Server"`},
		{"kerberos", `Server { com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true; };`, "hutch supports SASL DIGEST-MD5"},
		{"no flag", `Server { org.apache.zookeeper.server.auth.DigestLoginModule user_a="b"; };`, "line 1: expected required"},
		{"no semicolon after section", "Server {\n org.apache.zookeeper.server.auth.DigestLoginModule required;\n}", "line 3: expected ';'"},
		{"unterminated string", `Server { org.apache.zookeeper.server.auth.DigestLoginModule required user_a="b; };`, "unterminated quoted string"},
		{"unterminated comment", `/* Server {`, "unterminated comment"},
		{"option without value", `Server { org.apache.zookeeper.server.auth.DigestLoginModule required user_a=; };`, "expected a value"},
		{"twice", `Server { org.apache.zookeeper.server.auth.DigestLoginModule required; }; Server { org.apache.zookeeper.server.auth.DigestLoginModule required; };`, "appears twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseJAAS(strings.NewReader(tc.in), "Server")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %q, %v; want an error containing %q", got, err, tc.want)
			}
		})
	}
}

func TestLoadJAAS(t *testing.T) {
	path := filepath.Join(t.TempDir(), "jaas.conf")
	if err := os.WriteFile(path, []byte(`Server { org.apache.zookeeper.server.auth.DigestLoginModule required user_super="s3cret"; };`), 0o600); err != nil {
		t.Fatal(err)
	}
	users, err := LoadJAAS(path, "Server")
	if err != nil || users["super"] != "s3cret" {
		t.Fatalf("%q %v", users, err)
	}
	if _, err := LoadJAAS(path+".missing", "Server"); err == nil {
		t.Fatal("missing file accepted")
	}
}

func FuzzParseJAAS(f *testing.F) {
	f.Add(`Server { org.apache.zookeeper.server.auth.DigestLoginModule required user_a="b" user_c=d; };`)
	f.Add("// c\n/* d */ Server { x required; };")
	f.Add(`Server { org.apache.zookeeper.server.auth.DigestLoginModule required user_a="\"`)
	f.Fuzz(func(t *testing.T, in string) {
		users, err := ParseJAAS(strings.NewReader(in), "Server")
		if err == nil && users == nil {
			t.Fatal("nil users without an error")
		}
	})
}
