import { anchor, anchorAll } from "../src/anchoring.ts";
import { anchoringSuite } from "../../clients/shared/test/anchoringSuite.ts";

anchoringSuite({ anchor, anchorAll });
