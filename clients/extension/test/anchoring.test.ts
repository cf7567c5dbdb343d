import { anchor, anchorAll } from "../src/lib/anchoring.ts";
import { anchoringSuite } from "../../../clients/shared/test/anchoringSuite.ts";

anchoringSuite({ anchor, anchorAll });
